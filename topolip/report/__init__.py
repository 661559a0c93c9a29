"""The report layer (torch-free): formatting for the book, figures, and each chapter's findings.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.report.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
