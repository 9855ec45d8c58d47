#include "ModelSession.h"

#include "Preferences.h"

ModelSession::ModelSession(QObject* parent)
    : QObject(parent), deviceSelector_(preferences::deviceSelector()) {}

void ModelSession::setState(State state) {
    state_ = state;
    emit stateChanged(state);
}

void ModelSession::open(const QString& path, const QString& deviceSelector) {
    if (state_ == State::Loading) return;
    if (!deviceSelector.isEmpty()) deviceSelector_ = deviceSelector;
    contextLengthBefore_.reset();  // (setContextLength and chooseDevice set them again for their own load)
    deviceBefore_.reset();
    path_ = path;
    remote_ = false;
    emit loadStarted(path, false);
    setState(State::Loading);
    emit loadRequested(path, deviceSelector_, preferences::contextLength(path));
}

void ModelSession::openRemote(const RemoteEndpoint& endpoint) {
    if (state_ == State::Loading) return;
    contextLengthBefore_.reset();
    deviceBefore_.reset();
    path_.clear();
    remote_ = true;
    remoteEndpoint_ = endpoint;
    remoteEndpoint_.apiKey.clear();
    remoteReport_ = RemoteReport();
    emit loadStarted(QString(), false);
    setState(State::Loading);
    emit remoteRequested(endpoint);
}

void ModelSession::onRemoteConnected(const RemoteReport& report) {
    if (!remote_) return;  // (a local load came after)
    remoteReport_ = report;
    emit remoteConnected(report);
    setState(State::Ready);
}

void ModelSession::onRemoteFailed(const QString& message) {
    if (!remote_) return;
    remote_ = false;
    setState(State::NoModel);
    emit remoteFailed(remoteEndpoint_, message);
}

void ModelSession::setContextLength(uint32_t length) {
    if (state_ != State::Ready || path_.isEmpty() || remote_) return;
    const uint32_t before = preferences::contextLength(path_);
    if (length == before) return;
    preferences::setContextLength(path_, length);
    open(path_);
    contextLengthBefore_ = before;
}

void ModelSession::chooseDevice(const QString& selector) {
    const QString before = deviceSelector_;
    deviceSelector_ = selector;
    preferences::setDeviceSelector(selector);
    emit deviceSelectorChanged(selector);
    if (path_.isEmpty() || state_ != State::Ready || selector == before) return;
    open(path_);
    deviceBefore_ = before;
}

void ModelSession::onLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                            const LoadReport& report) {
    model_ = model;
    device_ = device;
    report_ = report;
    contextLengthBefore_.reset();
    deviceBefore_.reset();
    preferences::setLastModel(path_);
    emit loaded(model, device, report);
    setState(State::Ready);
}

void ModelSession::onLoadFailed(const QString& message) {
    const QString path = path_;
    if (contextLengthBefore_) {
        const uint32_t asked = preferences::contextLength(path);
        preferences::setContextLength(path, *contextLengthBefore_);
        contextLengthBefore_.reset();
        setState(State::NoModel);
        emit rolledBack(Change::ContextLength, path, QString::number(asked), message);
        open(path);
        return;
    }
    if (deviceBefore_) {
        const QString asked = deviceSelector_;
        deviceSelector_ = *deviceBefore_;
        deviceBefore_.reset();
        preferences::setDeviceSelector(deviceSelector_);
        emit deviceSelectorChanged(deviceSelector_);
        setState(State::NoModel);
        emit rolledBack(Change::Device, path, asked, message);
        open(path);
        return;
    }
    path_.clear();
    setState(State::NoModel);
    emit failed(path, message);
}

void ModelSession::onReloading() {
    if (state_ == State::Loading || path_.isEmpty()) return;  // another load is under way anyway
    emit loadStarted(path_, true);
    setState(State::Loading);
}

void ModelSession::onUnloaded() {
    if (state_ == State::Loading) return;  // the old model is dropped before a new one loads
    path_.clear();
    emit unloaded();
    setState(State::NoModel);
}
