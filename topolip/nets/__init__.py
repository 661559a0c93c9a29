"""The networks layer (torch): data sets, models, training and checkpoints.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.nets.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
