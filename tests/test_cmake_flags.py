"""The add-never-replace rule, checked with real CMake on a tiny project."""

import json
import subprocess

import pytest

from pgolab.targets.base import cmake_flags_include
from pgolab.variants import FlagSet

from conftest import need

pytestmark = pytest.mark.slow   # real CMake configures, and a compiler builds, a tiny project


def configure_tiny(tmp_path, flags: FlagSet, build_type="Release"):
    need("cmake")
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(tiny C CXX)\n"
                                        "add_executable(tiny main.cc)\n")
    (src / "main.cc").write_text("#include <cassert>\nint main(){assert(1);return 0;}\n")
    build = tmp_path / "build"
    build.mkdir()
    include = build / "pgolab-flags.cmake"
    include.write_text(cmake_flags_include(flags))
    subprocess.run(["cmake", "-S", src, "-B", build, f"-DCMAKE_BUILD_TYPE={build_type}",
                    f"-DCMAKE_PROJECT_INCLUDE={include}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
                   check=True, capture_output=True)
    (entry,) = json.loads((build / "compile_commands.json").read_text())
    return build, entry["command"].split()


def test_flags_are_added_after_the_build_types_own(tmp_path):
    build, argv = configure_tiny(tmp_path, FlagSet(["-O2", "-fno-omit-frame-pointer"], ["-Wl,-O1"]))
    assert "-DNDEBUG" in argv, "the build type's -DNDEBUG must survive"
    assert argv.index("-O3") < argv.index("-O2"), "pgolab's -O2 must come after Release's -O3 to win"
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)
    link = (build / "CMakeFiles" / "tiny.dir" / "link.txt").read_text()
    assert "-Wl,-O1" in link


def test_relwithdebinfo_keeps_its_flags_too(tmp_path):
    _, argv = configure_tiny(tmp_path, FlagSet(["-march=native"], []), build_type="RelWithDebInfo")
    assert "-DNDEBUG" in argv and "-g" in argv and "-march=native" in argv
