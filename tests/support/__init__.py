"""What the tests share: the loopback HTTP servers (``server``,
``fault_server``), the session's redis-server (``redis_server``, a pytest
plugin), fleet workers run as processes (``fleet_crawl``, ``redis_fleet``),
real crawls (``crawl_helpers``) and small helpers (``utils``)."""
