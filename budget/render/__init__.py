"""render: the Markdown and HTML reports and the decision page, from the Plan through jinja2
templates. Imports plan and below; never sheets."""
