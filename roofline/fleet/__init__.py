"""Many models on owned and rented GPUs: the fleet file, sizing per model and chip, placement."""
