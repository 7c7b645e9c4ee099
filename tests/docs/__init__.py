"""The documentation: the site's strict build, its hook, and the rules of the user pages."""
