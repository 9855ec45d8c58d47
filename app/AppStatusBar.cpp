#include "AppStatusBar.h"

#include <QLabel>
#include <algorithm>

#include "Format.h"
#include "StatusLabel.h"
#include "UiPriority.h"

AppStatusBar::AppStatusBar(QLabel* apiLabel, QWidget* parent)
    : QStatusBar(parent),
      state_(new StatusLabel(this)),
      context_(new StatusLabel(this)),
      device_(new QLabel(this)) {
    state_->setObjectName(QStringLiteral("stateLabel"));
    context_->setObjectName(QStringLiteral("contextLabel"));
    device_->setObjectName(QStringLiteral("deviceLabel"));
    clearDevice();
    for (QWidget* w : std::initializer_list<QWidget*>{apiLabel, state_, context_, device_})
        addPermanentWidget(w);
}

void AppStatusBar::showState(const QString& text) {
    state_->setFittedText(text);
}

void AppStatusBar::showLiveState(const QString& text) {
    state_->setLiveText(text);
}

void AppStatusBar::setDevice(const lantern::DeviceInfo& device) {
    QString text = QString::fromStdString(device.name);
    if (device.type == lantern::DeviceType::Cpu) {
        text += QStringLiteral(" · ") + deviceTypeDescription(device.type);
        yieldUiThreadToInference();  // the model now runs on the UI's cores (UiPriority.h)
    }
    device_->setText(text);
    device_->setToolTip(
        tr("%1\nDriver: %2").arg(deviceDescription(device), QString::fromStdString(device.driver)));
}

void AppStatusBar::setRemote(const QString& text) {
    device_->setText(text);
    device_->setToolTip(text);
}

void AppStatusBar::clearDevice() {
    device_->setText(tr("No device"));
}

void AppStatusBar::showStreamPosition(quint32 position) {
    showContext(static_cast<int>(std::min(position + 1, contextLength_)));
}

void AppStatusBar::setCachedTokens(int tokens, bool streaming) {
    cachedTokens_ = tokens;
    if (!streaming) showContext(tokens);
}

void AppStatusBar::showContext(int tokens) {
    if (contextLength_ == 0 || tokens < 0) return;
    context_->setLiveText(tr("Context %1 / %2").arg(display::count(tokens), display::count(contextLength_)));
}
