"""Signals sent by the package, for other components and users to connect to.

``robots_outcome`` is sent (synchronously, with ``send_catch_log``) each time
``RobotsMiddleware`` obtains an origin's outcome, fetched or read from a
store, with the keyword arguments ``origin`` (the robots.txt URL),
``outcome`` (an :class:`~scrapy_rfc9309.outcome.Outcome`) and ``request``
(the request that needed it).

Scrapy's own ``scrapy.signals.robots_parsed`` is sent too, when the outcome
holds an HTTP answer, with a :class:`~scrapy_rfc9309.RobotParser`.
"""

from __future__ import annotations

robots_outcome = object()
