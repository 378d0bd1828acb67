"""Views of builds: the MIME bundle, HTML and text renderings, lexers and widgets."""
