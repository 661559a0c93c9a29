"""The perturbations layer (torch): attacks, minimal adversarial radii, corruptions and
out-of-distribution sets.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.perturbations.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
