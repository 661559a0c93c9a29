"""The topology layer (numpy only): persistence diagrams of point clouds, diagram distances, the
TopoLip metric and its spec.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.topology.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
