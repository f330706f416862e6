"""The browser libraries the pages load from the book itself, so that they work with no network.

MathJax, require.js and the ipywidgets HTML manager are pinned npm packages (:data:`VENDOR`),
fetched once with ``npm pack`` into the ignored ``book/_static/vendor/`` (:func:`fetch_vendor`,
``make vendor``) and served from the book's own ``_static``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from physid.book.errors import BuildError


@dataclass(frozen=True)
class VendorPackage:
    """A pinned npm package whose browser files the pages load from the book itself.

    ``files`` maps a path inside the package (``package/`` stripped) to where it goes under
    ``_static/vendor/<name>/``; a folder is copied whole, minus source maps.
    """

    name: str
    spec: str
    integrity: str
    files: dict[str, str]


#: MathJax 3 (every equation), require.js and the ipywidgets HTML manager (every explorer).
#: ``_config.yml`` points ``mathjax_path`` and ``nb_ipywidgets_js`` at these copies.
VENDOR: tuple[VendorPackage, ...] = (
    VendorPackage(
        "mathjax",
        "mathjax@3.2.2",
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        {
            "es5/tex-mml-chtml.js": "tex-mml-chtml.js",
            "es5/input": "input",
            "es5/output/chtml": "output/chtml",
            "es5/a11y": "a11y",
            "es5/ui": "ui",
            "es5/sre": "sre",
            "es5/adaptors": "adaptors",
            "LICENSE": "LICENSE",
        },
    ),
    VendorPackage(
        "requirejs",
        "requirejs@2.3.7",
        "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==",
        {"require.js": "require.js"},
    ),
    VendorPackage(
        "html-manager",
        "@jupyter-widgets/html-manager@1.0.15",
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        {"dist": "."},
    ),
)

#: Files of the html-manager's ``dist`` folder that the embedding page never loads (their
#: licence texts are kept).
_VENDOR_SKIP = re.compile(r"\.map$|^(embed|libembed-amd|index)\.js$")


def _integrity(path: Path) -> str:
    digest = hashlib.sha512(path.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def _copy_selected(package_dir: Path, files: dict[str, str], target: Path) -> None:
    for source, dest in files.items():
        origin = package_dir / source
        if origin.is_dir():
            for path in origin.rglob("*"):
                if path.is_file() and not _VENDOR_SKIP.search(path.name):
                    out = target / dest / path.relative_to(origin)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, out)
        else:
            (target / dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target / dest)


def fetch_vendor(static_dir: Path) -> Path:
    """Make sure ``static_dir/vendor`` holds every :data:`VENDOR` package; return that folder.

    A package already there at its pinned version is kept; a missing one is fetched with
    ``npm pack`` (the npm registry), checked against its pinned integrity hash and unpacked.
    A BuildError says what is missing when npm is not installed or the fetch fails.
    """
    vendor = Path(static_dir) / "vendor"
    for package in VENDOR:
        target = vendor / package.name
        stamp = target / ".version"
        if stamp.is_file() and stamp.read_text() == package.spec:
            continue
        npm = shutil.which("npm")
        if npm is None:
            raise BuildError(
                f"npm is needed once to fetch {package.spec} into {vendor} "
                "(the pages load MathJax and the widget manager from there): apt-get install npm"
            )
        with tempfile.TemporaryDirectory() as tmp:
            result = subprocess.run(
                [npm, "pack", package.spec, "--json", "--pack-destination", tmp],
                capture_output=True, text=True, check=False, cwd=tmp,
            )
            if result.returncode != 0:
                raise BuildError(f"npm pack {package.spec} failed:\n{result.stderr[-2000:]}")
            tarball = Path(tmp) / json.loads(result.stdout)[0]["filename"]
            if _integrity(tarball) != package.integrity:
                raise BuildError(f"{package.spec}: the fetched tarball does not match its pin")
            with tarfile.open(tarball) as archive:
                archive.extractall(Path(tmp) / "unpacked", filter="data")
            staged = Path(tmp) / "staged"
            _copy_selected(Path(tmp) / "unpacked" / "package", package.files, staged)
            (staged / ".version").write_text(package.spec)
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copytree(staged, target)
            except FileExistsError:  # another run fetched it at the same time
                if not (stamp.is_file() and stamp.read_text() == package.spec):
                    raise
    return vendor
