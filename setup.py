"""The repository's top-level folders installed as one namespace, `tcgen05_conformance`, so that
nothing generic (`device`, `probes` ...) lands in site-packages. The package list is computed here
because pyproject.toml cannot map several folders into one namespace and find their subpackages."""

from setuptools import find_packages, setup

#: Each installed package and the repository folder it comes from.
FOLDERS = {
    "tcgen05_conformance": "conformance",
    "tcgen05_conformance.oracles": "oracles",
    "tcgen05_conformance.generators": "generators",
    "tcgen05_conformance.device": "device",
    "tcgen05_conformance.probes": "probes",
}

setup(
    package_dir=FOLDERS,
    packages=[f"{package}.{sub}" if sub else package
              for package, folder in FOLDERS.items() for sub in ["", *find_packages(folder)]],
)
