"""Reports: rendering the notebook templates, the narrative, plots and the demo."""
