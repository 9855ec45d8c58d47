// Dock panels whose content can outgrow a small dock, or changes while a reply streams: the panel
// gets a frameless scroll area and its widgets go into the returned content widget. A label's new
// text re-lays out its parents up to the first widget that absorbs it; docked directly, that is the
// main window, while a scroll area takes its content's size changes itself
// (docs/decisions/0034-streaming-does-not-relayout-the-window.md). UI thread only.
#pragma once
class QWidget;

QWidget* makeScrollableContent(QWidget* panel);
