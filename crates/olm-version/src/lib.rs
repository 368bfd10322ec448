//! Version semantics of OLM: Masterminds constraints, blang ranges, VersionRelease ordering.
