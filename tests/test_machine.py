"""The host CPU's identity (measure/machine.py): a name per CPU model, whatever the OS calls it, and the
facts beside it that decide whether two hosts' times compare."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfgate.baseline import baseline_path
from perfgate.measure.machine import machine_from
from perfgate.model import Environment

XEON_8480 = {"brand_raw": "Intel(R) Xeon(R) Platinum 8480+", "family": 6, "model": 143, "stepping": 8}
GENERIC_XEON = {"brand_raw": "Intel(R) Xeon(R) Processor", "family": 6, "model": 85, "stepping": 7}
APPLE_M1 = {"brand_raw": "Apple M1", "arch_string_raw": "arm64", "count": 8}
APPLE_M2 = {"brand_raw": "Apple M2 Pro", "arch_string_raw": "arm64", "count": 12}
GRAVITON2 = {"arch_string_raw": "aarch64", "count": 4}  # no brand: /proc/cpuinfo has no model name on aarch64
GRAVITON2_PROC = {"CPU implementer": "0x41", "CPU part": "0xd0c"}
GRAVITON3_PROC = {"CPU implementer": "0x41", "CPU part": "0xd40"}


def test_a_cpu_with_a_model_number_in_its_brand_is_named_by_its_brand():
    assert machine_from(XEON_8480, {}).name == "Intel(R) Xeon(R) Platinum 8480+"


def test_apple_silicon_machines_are_not_one_arm_machine():
    names = {machine_from(APPLE_M1, {}).name, machine_from(APPLE_M2, {}).name}
    assert names == {"Apple M1", "Apple M2 Pro"}


def test_graviton_generations_without_a_brand_string_get_their_own_names():
    g2 = machine_from(GRAVITON2, GRAVITON2_PROC)
    g3 = machine_from({**GRAVITON2, "brand_raw": "aarch64"}, GRAVITON3_PROC)
    assert g2.name == "aarch64 CPU (implementer 0x41 part 0xd0c)"
    assert g3.name == "aarch64 CPU (implementer 0x41 part 0xd40)"


def test_generic_xeon_brands_of_two_generations_do_not_share_a_baseline(tmp_path):
    skylake = machine_from(GENERIC_XEON, {})
    icelake = machine_from({**GENERIC_XEON, "model": 106, "stepping": 6}, {})
    assert skylake.name == "Intel(R) Xeon(R) Processor (family 6 model 85)"
    assert _path(tmp_path, skylake.name, skylake.brand) != _path(tmp_path, icelake.name, icelake.brand)
    # steppings of one model are one microarchitecture: one baseline
    assert machine_from({**GENERIC_XEON, "stepping": 4}, {}).name == skylake.name


def test_the_facts_that_decide_comparability_are_read_with_units():
    m = machine_from({**XEON_8480, "count": 2, "l2_cache_size": 2 * 2**20, "l3_cache_size": "105 MiB"}, {})
    assert (m.logical_cores, m.l2_cache_bytes, m.l3_cache_bytes) == (2, 2 * 2**20, 105 * 2**20)
    assert m.caches == "L2 2 MiB, L3 105 MiB" and m.os_release


def _env(name: str, brand: str = "", model: str = "") -> Environment:
    return Environment(device_kind="host", device_name=name, cpu_brand=brand, cpu_model=model)


def _path(tmp_path: Path, name: str, brand: str) -> Path:
    return baseline_path(tmp_path, _env(name, brand, "m"))


def test_a_baseline_written_under_the_bare_brand_is_still_found_and_compared(tmp_path):
    old = _env("AMD EPYC")  # written by perfgate 0.2.0: no model id recorded
    today = _env("AMD EPYC (family 25 model 17)", "AMD EPYC", "family 25 model 17")
    assert baseline_path(tmp_path, today).name == "host-amd-epyc-family-25-model-17.json"  # nothing there yet
    (tmp_path / "host-amd-epyc.json").write_text("{}")
    assert baseline_path(tmp_path, today).name == "host-amd-epyc.json"
    assert old.comparable_with(today) and today.comparable_with(old)
    # once a baseline under today's name exists, it is the one
    (tmp_path / "host-amd-epyc-family-25-model-17.json").write_text("{}")
    assert baseline_path(tmp_path, today).name == "host-amd-epyc-family-25-model-17.json"


def test_an_old_baseline_of_another_brand_stays_not_comparable():
    today = _env("Intel(R) Xeon(R) Processor (family 6 model 85)", "Intel(R) Xeon(R) Processor", "family 6 model 85")
    assert not _env("AMD EPYC").comparable_with(today)
    # two of today's generic Xeons of other models are not comparable either
    name = "Intel(R) Xeon(R) Processor (family 6 model 106)"
    other = replace(today, device_name=name, cpu_model="family 6 model 106")
    assert not other.comparable_with(today)
