//! File-based catalogs (FBC): load, model, write, validate, upgrade graph, templates.
