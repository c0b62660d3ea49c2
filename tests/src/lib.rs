//! Support for the workspace-level conformance tests.
