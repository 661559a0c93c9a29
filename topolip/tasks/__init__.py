"""The tasks layer (Dask): a scheduler-agnostic task runner and the per-model tasks (train, map
over trained models).

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.tasks.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
