"""The owner process and the local daemon: election, the stdio proxy, the admin
API. The HTTP hardening it shares with the memory browser is ``protocol.httpguard``; the
socket peer checks are ``common.peercred``."""
