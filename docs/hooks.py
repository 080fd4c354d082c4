"""mkdocs build hook: fills the reference pages from the code (``plait.cli.reference``)
so they cannot drift: ``{{ configuration_reference }}`` and ``{{ error_reference }}``."""


def on_page_markdown(markdown, page, config, files):
    from plait.cli.reference import configuration_markdown, errors_markdown
    if "{{ configuration_reference }}" in markdown:
        markdown = markdown.replace("{{ configuration_reference }}", configuration_markdown())
    if "{{ error_reference }}" in markdown:
        markdown = markdown.replace("{{ error_reference }}", errors_markdown())
    return markdown
