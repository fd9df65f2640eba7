"""A simulated node's past: its admission log replayed (``replay``), the series and pages drawn
from it (``series``, ``views``) and the page of each rejected attempt (``rejections``).
"""
