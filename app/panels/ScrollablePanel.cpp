#include "panels/ScrollablePanel.h"

#include <QFrame>
#include <QScrollArea>
#include <QVBoxLayout>

QWidget* makeScrollableContent(QWidget* panel) {
    auto* outer = new QVBoxLayout(panel);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(panel);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* content = new QWidget(scroll);
    scroll->setWidget(content);
    outer->addWidget(scroll);
    return content;
}
