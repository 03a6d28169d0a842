"""The sample spiders; each crawls part of the demo site."""
