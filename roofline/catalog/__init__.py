"""The only room that reads shipped data: catalogs, kernel curves, calibrations, bands."""
