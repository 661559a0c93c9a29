"""The evidence layer (torch-free): statistics, claims and their calibration, the measure study,
masking checks, bound tables.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.evidence.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
