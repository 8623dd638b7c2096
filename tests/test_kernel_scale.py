"""validation/fit_kernel_scale.py scales one kernel group's compute side and nothing else."""

from validation.fit_family_share import _Scaled
from validation.fit_kernel_scale import compute_only, in_group


def test_only_the_groups_chips_and_only_their_compute_share(cat):
    hopper = in_group("nvidia-hopper")
    scaled = _Scaled(cat, hopper, compute_only, 0.5)
    h100, a100 = cat.accelerator("h100"), cat.accelerator("a100")
    assert hopper(h100) and not hopper(a100)
    e = scaled.accelerator("h100").efficiency
    assert e.compute == 0.5 * h100.efficiency.compute  # 0.79 x 0.5, by hand 0.395
    assert abs(e.compute - 0.395) < 1e-12
    assert e.memory == h100.efficiency.memory
    assert scaled.accelerator("a100") == a100


def test_least_median_and_least_squares_fits_by_hand():
    """|log errors| at k 0.8: a 0.1, 0.1, b 2.0 (median 0.1, squares 4.02); at k 1: a 0.3, 0.3,
    b 0 (median 0.3, squares 0.18). Least median picks 0.8, least squares 1 (b's one far run
    decides it); without a, only b counts and both pick 1."""
    from validation.fit_family_share import fit
    from validation.fit_kernel_scale import fit_median

    t = {0.8: {"a": [0.1, -0.1], "b": [2.0]}, 1.0: {"a": [0.3, 0.3], "b": [0.0]}}
    assert fit_median(t) == 0.8 and fit(t) == 1.0
    assert fit_median(t, "a") == 1.0 and fit(t, "a") == 1.0
