"""The MCP door: the server, its tools and resources, bearer auth, and the HTTP hardening
(``httpguard``) every HTTP listener uses (the daemon's, ``kioku serve --http``, the
memory browser's forms, ``kioku ui``'s forwarder)."""
