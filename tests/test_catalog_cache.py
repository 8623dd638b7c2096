"""The parse cache: a changed file is parsed again, a broken or read-only cache is never an
error, and problems are never cached away."""

from __future__ import annotations

import os

import pytest

from roofline.catalog import cache
from roofline.catalog import load as catalog
from roofline.catalog.cache import ParseCache
from roofline.catalog.load import load_catalog

ENTRY = """accelerators:
- id: test-gpu
  name: Test GPU
  vendor: test
  family: nvidia-datacenter
  memory: {{type: HBM3, capacity_gb: {gb}, bandwidth_tb_s: 1.0}}
  dense_tflops: {{bf16: 100}}
  sparsity_2_4: false
  source: "a test"
"""


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(catalog, "_PARSED", ParseCache())
    return tmp_path / "cache"


def test_cache_is_written_and_a_changed_file_is_parsed_again(tmp_path, fresh_cache):
    user = tmp_path / "cat"
    user.mkdir()
    f = user / "gpu.yaml"
    f.write_text(ENTRY.format(gb=10))
    assert load_catalog([user]).accelerator("test-gpu").memory_nominal_bytes == 10e9
    assert list(fresh_cache.glob("catalog-*.pickle"))
    f.write_text(ENTRY.format(gb=200))  # another size: parsed again, not served from the cache
    assert load_catalog([user]).accelerator("test-gpu").memory_nominal_bytes == 200e9


def test_broken_cache_is_rebuilt(tmp_path, fresh_cache, monkeypatch):
    catalog._shipped.cache_clear()
    load_catalog([])
    assert {p.name.split("-")[0] for p in fresh_cache.glob("*.pickle")} == {"catalog", "shipped"}
    for p in fresh_cache.glob("*.pickle"):
        p.write_bytes(b"not a pickle")
    monkeypatch.setattr(catalog, "_PARSED", ParseCache())
    catalog._shipped.cache_clear()
    assert load_catalog([]).accelerator("h100").id == "nvidia-h100-sxm"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_read_only_cache_dir_is_not_an_error(tmp_path, fresh_cache):
    fresh_cache.mkdir()
    fresh_cache.chmod(0o500)
    catalog._shipped.cache_clear()
    assert load_catalog([]).accelerator("h100")


def test_unwritable_cache_location_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(catalog, "_PARSED", ParseCache())
    catalog._shipped.cache_clear()
    assert load_catalog([]).accelerator("h100")


def test_problems_are_not_cached(tmp_path, fresh_cache):
    user = tmp_path / "cat"
    user.mkdir()
    (user / "gpu.yaml").write_text(ENTRY.format(gb=10).replace("vendor: test", "vendr: test"))
    for _ in range(2):
        problems = catalog.validate_dirs([user])
        assert len(problems) == 1 and "vendr" in problems[0]


def test_shipped_snapshot_follows_the_files(tmp_path, fresh_cache, monkeypatch):
    """The resolved shipped catalog is served from its snapshot only while no shipped file
    changed: an edited file is read again (here a 10 GB GPU becomes a 200 GB one)."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    f = shipped / "gpu.yaml"
    f.write_text(ENTRY.format(gb=10))
    monkeypatch.setattr(catalog, "shipped_dirs", lambda: [shipped])
    catalog._shipped.cache_clear()
    assert load_catalog([]).accelerator("test-gpu").memory_nominal_bytes == 10e9
    assert list(fresh_cache.glob("shipped-*.pickle"))
    catalog._shipped.cache_clear()
    assert load_catalog([]).accelerator("test-gpu").memory_nominal_bytes == 10e9
    f.write_text(ENTRY.format(gb=200))
    catalog._shipped.cache_clear()
    assert load_catalog([]).accelerator("test-gpu").memory_nominal_bytes == 200e9
    catalog._shipped.cache_clear()


def test_installs_side_by_side_keep_their_own_caches(tmp_path, fresh_cache, monkeypatch):
    """Writing a cache deletes only the same install's caches of older code (and untagged ones
    of earlier versions), never another install's."""
    other = fresh_cache / "catalog-00000000-11111111.pickle"  # another install's
    older = cache.cache_file("catalog").with_name(
        cache.cache_file("catalog").name.rsplit("-", 1)[0] + "-22222222.pickle"
    )  # this install, older code
    untagged = fresh_cache / "catalog-33333333.pickle"
    fresh_cache.mkdir()
    for p in (other, older, untagged):
        p.write_bytes(b"x")
    cache.write_pickle(cache.cache_file("catalog"), {})
    assert other.exists() and not older.exists() and not untagged.exists()
    assert cache.read_pickle(cache.cache_file("catalog")) == {}


def test_shipped_snapshot_sees_a_new_file_in_a_subdirectory(tmp_path, fresh_cache, monkeypatch):
    """The snapshot's key lists the whole tree (os.scandir): a file added in a subdirectory
    after the snapshot was written is read."""
    shipped = tmp_path / "shipped"
    (shipped / "more").mkdir(parents=True)
    (shipped / "gpu.yaml").write_text(ENTRY.format(gb=10))
    monkeypatch.setattr(catalog, "shipped_dirs", lambda: [shipped])
    catalog._shipped.cache_clear()
    assert "test-gpu-2" not in load_catalog([]).accelerators
    second = ENTRY.format(gb=20).replace("id: test-gpu", "id: test-gpu-2")
    (shipped / "more" / "gpu2.yml").write_text(second)
    catalog._shipped.cache_clear()
    assert load_catalog([]).accelerator("test-gpu-2").memory_nominal_bytes == 20e9
    catalog._shipped.cache_clear()


PRICES = """prices:
- id: test-gpu
  usd_per_gpu_hour: {usd}
  offers:
  - {{cloud: a, usd_per_gpu_hour: {usd}, date: 2026-01-01, source: "a test"}}
  board_power_w: 700
  power_source: "a test"
"""


def test_prices_snapshot_follows_the_file(tmp_path, fresh_cache):
    """Prices come from their snapshot while the file is unchanged; an edit is read again, and
    a file with a problem is refused every time (never served from a snapshot)."""
    f = tmp_path / "prices.yaml"
    f.write_text(PRICES.format(usd=2.5))
    assert catalog.load_prices(f)["test-gpu"].usd_per_gpu_hour == 2.5
    assert list(fresh_cache.glob("prices-*.pickle"))
    assert catalog.load_prices(f)["test-gpu"].usd_per_gpu_hour == 2.5
    f.write_text(PRICES.format(usd=3.75))
    assert catalog.load_prices(f)["test-gpu"].usd_per_gpu_hour == 3.75
    f.write_text(PRICES.format(usd=-1))
    for _ in range(2):
        with pytest.raises(catalog.CatalogError):
            catalog.load_prices(f)
