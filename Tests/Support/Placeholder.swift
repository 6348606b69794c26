// Test support: being written.
