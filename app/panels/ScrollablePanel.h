// Dock panels whose content can outgrow a small dock: the panel gets a frameless scroll area and
// its widgets go into the returned content widget.
#pragma once
class QWidget;

QWidget* makeScrollableContent(QWidget* panel);
