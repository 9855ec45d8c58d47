// The app's colours and a few metrics, in one place so panels and the chat agree.
#pragma once
#include <QColor>
#include <QIcon>
#include <QPixmap>
#include <cstdint>

namespace theme {

QColor accent();  // lantern amber
QColor accentDark();
QColor window();   // background of the chat area
QColor surface();  // cards / assistant bubbles
QColor border();
QColor text();
QColor mutedText();
QColor warningText();  // a message that says something will not work
QColor userBubble();
QColor usedBlock();    // KV block in use by a sequence
QColor cachedBlock();  // KV block kept for prefix reuse
QColor emptyBlock();
// A distinct colour per KV-cache owner (sequence id); index 0 is the accent.
QColor ownerColor(uint32_t ownerIndex);
// Light → amber → deep red ramp for heatmaps, t in [0, 1].
QColor heat(double t);

// The application icon: resources/lantern.svg's shapes painted with QPainter (no SVG plugin needed).
QIcon appIcon();
QPixmap paintAppIcon(int size);
// The global style sheet applied once by main().
QString styleSheet();

}  // namespace theme
