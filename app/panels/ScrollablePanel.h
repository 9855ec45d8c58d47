// Dock panels whose content can outgrow a small dock, or changes while a reply streams: the panel
// gets a frameless scroll area and its widgets go into the returned content widget. A label's new
// text re-lays out its parents up to the first widget that absorbs it; docked directly, that is the
// main window (every dock and each word-wrapped label's size: ~20 % of the UI thread at 20 updates
// a second), while a scroll area takes its content's size changes itself.
#pragma once
class QWidget;

QWidget* makeScrollableContent(QWidget* panel);
