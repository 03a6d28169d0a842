"""The sample project of scrapy-rfc9309."""
