"""The client instance: client id, route service, broker address table, heartbeat, typed calls."""
