"""The owner process and the local daemon: election, the stdio proxy, the admin
API, socket and HTTP hardening."""
