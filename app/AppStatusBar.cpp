#include "AppStatusBar.h"

#include <QEvent>
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

void AppStatusBar::changeEvent(QEvent* event) {
    QStatusBar::changeEvent(event);
    if (event->type() != QEvent::LanguageChange) return;
    // The state is shown again by the window (refreshState); the rest is worded here.
    if (device_info_)
        setDevice(*device_info_);
    else if (!remoteHost_.isEmpty())
        setRemote(remoteHost_, remoteKind_);
    else
        clearDevice();
    showContext(cachedTokens_);
}

void AppStatusBar::setDevice(const lantern::DeviceInfo& device) {
    device_info_ = device;
    remoteHost_.clear();
    QString text = QString::fromStdString(device.name);
    if (device.type == lantern::DeviceType::Cpu) {
        text += QStringLiteral(" · ") + deviceTypeDescription(device.type);
        yieldUiThreadToInference();  // the model now runs on the UI's cores (UiPriority.h)
    }
    device_->setText(text);
    device_->setToolTip(
        tr("%1\nDriver: %2").arg(deviceDescription(device), QString::fromStdString(device.driver)));
}

void AppStatusBar::setRemote(const QString& host, remote::ServerKind kind) {
    device_info_.reset();
    remoteHost_ = host;
    remoteKind_ = kind;
    const QString text = tr("Remote: %1 (%2)").arg(host, remote::serverKindName(kind));
    device_->setText(text);
    device_->setToolTip(text);
}

void AppStatusBar::clearDevice() {
    device_info_.reset();
    remoteHost_.clear();
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
