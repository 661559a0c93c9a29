"""The experiments layer (torch): one trained model in, tidy rows out (TopoLip, robustness, OOD,
baselines, sweeps).

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.experiments.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
