// RemoteEndpointStore — the remote endpoints the user saved (File > Remote Engines…): name, base
// URL and model in QSettings; each one's API key in the keyring (KeyringSecret, key
// "remote-endpoint:<name>"), never in settings. UI thread.
#pragma once
#include <QList>
#include <QString>

#include "remote/RemoteEndpoint.h"

namespace remote_endpoints {

QList<RemoteEndpoint> load();  // (apiKey empty: keys are read from the keyring when needed)
void save(const QList<RemoteEndpoint>& endpoints);
// The keyring entry of an endpoint's key.
QString keyringKey(const QString& name);
// The saved endpoint whose base URL is `url`'s (the same API root), or -1.
int indexOfUrl(const QList<RemoteEndpoint>& endpoints, const QString& url);

}  // namespace remote_endpoints
