#include "Theme.h"

#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QPixmap>
#include <QRadialGradient>
#include <QString>
#include <algorithm>
#include <array>
#include <cmath>

namespace theme {

QColor accent() {
    return QColor(0xE0, 0x8E, 0x1B);
}
QColor accentDark() {
    return QColor(0xB8, 0x6E, 0x0C);
}
QColor window() {
    return QColor(0xF5, 0xF6, 0xF8);
}
QColor surface() {
    return QColor(0xFF, 0xFF, 0xFF);
}
QColor border() {
    return QColor(0xDD, 0xE1, 0xE6);
}
QColor text() {
    return QColor(0x1F, 0x23, 0x28);
}
QColor mutedText() {
    return QColor(0x6B, 0x72, 0x7C);
}
QColor warningText() {
    return QColor(0xb3, 0x26, 0x1e);
}
QColor userBubble() {
    return QColor(0xFD, 0xEB, 0xCB);
}
QColor usedBlock() {
    return accent();
}
QColor cachedBlock() {
    return QColor(0x5B, 0x8D, 0xD6);
}
QColor emptyBlock() {
    return QColor(0xE6, 0xE9, 0xED);
}

QColor ownerColor(uint32_t ownerIndex) {
    static const std::array<QColor, 8> colors = {
        QColor(0xE0, 0x8E, 0x1B), QColor(0x3E, 0xA8, 0x6B), QColor(0xC0, 0x4F, 0x9A),
        QColor(0x8A, 0x63, 0xD2), QColor(0xD2, 0x55, 0x4B), QColor(0x2E, 0x9C, 0xB0),
        QColor(0x9A, 0x8B, 0x2E), QColor(0x6E, 0x7F, 0x99),
    };
    return colors[ownerIndex % colors.size()];
}

QColor heat(double t) {
    t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
    // Three stops: near-white, amber, deep red.
    const QColor a(0xFB, 0xF7, 0xEF), b(0xF0, 0xA0, 0x2C), c(0x8E, 0x1B, 0x10);
    auto mix = [](const QColor& x, const QColor& y, double u) {
        return QColor::fromRgbF(static_cast<float>(x.redF() + (y.redF() - x.redF()) * u),
                                static_cast<float>(x.greenF() + (y.greenF() - x.greenF()) * u),
                                static_cast<float>(x.blueF() + (y.blueF() - x.blueF()) * u));
    };
    return t < 0.5 ? mix(a, b, t * 2.0) : mix(b, c, (t - 0.5) * 2.0);
}

QPixmap paintAppIcon(int size) {
    // The shapes of resources/lantern.svg, on a 256-unit canvas.
    QPixmap pixmap(size, size);
    pixmap.fill(Qt::transparent);
    QPainter p(&pixmap);
    p.setRenderHint(QPainter::Antialiasing);
    p.scale(size / 256.0, size / 256.0);
    const QColor metal(0xE9, 0xED, 0xF2);

    QLinearGradient bg(0, 8, 0, 248);
    bg.setColorAt(0, QColor(0x2A, 0x3A, 0x51));
    bg.setColorAt(1, QColor(0x12, 0x1A, 0x26));
    p.setPen(Qt::NoPen);
    p.setBrush(bg);
    p.drawRoundedRect(QRectF(8, 8, 240, 240), 52, 52);

    QRadialGradient glow(QPointF(128, 140), 100);
    glow.setColorAt(0, QColor(0xFF, 0xBE, 0x5A, 140));
    glow.setColorAt(1, QColor(0xFF, 0xBE, 0x5A, 0));
    p.setBrush(glow);
    p.drawEllipse(QPointF(128, 140), 100, 100);

    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(metal, 9));
    p.drawEllipse(QPointF(128, 50), 17, 17);

    p.setPen(Qt::NoPen);
    p.setBrush(metal);
    p.drawPolygon(QPolygonF({QPointF(100, 62), QPointF(156, 62), QPointF(178, 90), QPointF(78, 90)}));

    QRadialGradient glass(QPointF(128, 146), 62);
    glass.setColorAt(0, QColor(0xFF, 0xE9, 0xAE));
    glass.setColorAt(0.55, QColor(0xF3, 0xAA, 0x3C));
    glass.setColorAt(1, QColor(0xD2, 0x70, 0x1A));
    p.setBrush(glass);
    p.setPen(QPen(metal, 8));
    p.drawRoundedRect(QRectF(88, 90, 80, 96), 14, 14);

    QPainterPath flame;
    flame.moveTo(128, 112);
    flame.cubicTo(140, 127, 146, 138, 146, 151);
    flame.arcTo(QRectF(110, 133, 36, 36), 0, -180);
    flame.cubicTo(110, 138, 116, 127, 128, 112);
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(0xFF, 0xF7, 0xDE));
    p.drawPath(flame);

    p.setBrush(metal);
    p.drawRoundedRect(QRectF(74, 186, 108, 16), 6, 6);
    return pixmap;
}

QIcon appIcon() {
    QIcon icon;
    for (int size : {16, 24, 32, 48, 64, 128, 256}) icon.addPixmap(paintAppIcon(size));
    return icon;
}

QString styleSheet() {
    return QStringLiteral(R"(
QMainWindow::separator { background: #dde1e6; width: 1px; height: 1px; }
QDockWidget { font-weight: 600; }
QDockWidget::title { background: #eef0f3; padding: 5px 8px; border-bottom: 1px solid #dde1e6; }
QToolBar { background: #ffffff; border-bottom: 1px solid #dde1e6; spacing: 6px; padding: 3px 6px; }
QStatusBar { background: #ffffff; border-top: 1px solid #dde1e6; }
QStatusBar QLabel { color: #4b525b; padding: 0 6px; }
QListWidget#conversationList { border: none; background: #fbfbfc; }
QPlainTextEdit#messageInput { border: 1px solid #cfd4da; border-radius: 8px; padding: 6px; background: #ffffff; }
QPlainTextEdit#messageInput:focus { border: 1px solid #e08e1b; }
QLineEdit#systemPrompt { border: 1px solid #dde1e6; border-radius: 6px; padding: 4px 8px; background: #ffffff; }
QPushButton#sendButton { background: #e08e1b; color: white; border: none; border-radius: 7px; padding: 7px 18px; font-weight: 600; }
QPushButton#sendButton:hover { background: #cc7f12; }
QPushButton#sendButton:disabled { background: #efcb96; }
QPushButton#stopButton, QPushButton#regenerateButton { border: 1px solid #cfd4da; border-radius: 7px; padding: 6px 14px; background: #ffffff; }
QPushButton#stopButton:disabled, QPushButton#regenerateButton:disabled { color: #a4aab2; }
QLabel[role="value"] { color: #1f2328; font-weight: 600; }
QLabel[role="caption"] { color: #6b727c; }
QLabel[role="section"] { color: #b86e0c; font-weight: 700; padding-top: 6px; }
)");
}

}  // namespace theme
