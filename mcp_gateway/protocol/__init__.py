"""The MCP door: the server, its tools and resources, bearer auth, the session socket."""
