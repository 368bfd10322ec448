//! CRD upgrade safety (placeholder).
