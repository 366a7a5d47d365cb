"""Views: terminal and JSON renderings of what the jobs computed. Nothing here computes."""
