"""The package version, in a module of its own: the store records it in every manifest and
the exporters in what they write, without importing the package that imports them."""
__version__ = "0.1.0"
