//! commlens core: see ARCHITECTURE.md.
