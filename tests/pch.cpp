// The object the test programs' shared precompiled header (GoogleTest, nlohmann/json) is built with; it has no code.
