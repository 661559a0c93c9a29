"""The pipeline around the science: parameters, the papermill runner with its cache, provenance
of tables, and the book build. Science modules never import this package.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.pipeline.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
