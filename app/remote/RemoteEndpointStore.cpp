#include "remote/RemoteEndpointStore.h"

#include <QSettings>

namespace remote_endpoints {

QList<RemoteEndpoint> load() {
    QSettings s;
    QList<RemoteEndpoint> list;
    const int n = s.beginReadArray(QStringLiteral("remoteEndpoints"));
    for (int i = 0; i < n; ++i) {
        s.setArrayIndex(i);
        RemoteEndpoint e;
        e.name = s.value(QStringLiteral("name")).toString();
        e.baseUrl = s.value(QStringLiteral("url")).toString();
        e.model = s.value(QStringLiteral("model")).toString();
        if (!e.name.isEmpty() && !e.baseUrl.isEmpty()) list.append(e);
    }
    s.endArray();
    return list;
}

void save(const QList<RemoteEndpoint>& endpoints) {
    QSettings s;
    s.remove(QStringLiteral("remoteEndpoints"));
    s.beginWriteArray(QStringLiteral("remoteEndpoints"), static_cast<int>(endpoints.size()));
    for (int i = 0; i < endpoints.size(); ++i) {
        s.setArrayIndex(i);
        s.setValue(QStringLiteral("name"), endpoints[i].name);
        s.setValue(QStringLiteral("url"), endpoints[i].baseUrl);
        s.setValue(QStringLiteral("model"), endpoints[i].model);
    }
    s.endArray();
}

QString keyringKey(const QString& name) {
    return QStringLiteral("remote-endpoint:") + name;
}

int indexOfUrl(const QList<RemoteEndpoint>& endpoints, const QString& url) {
    const QUrl root = remote::apiRoot(url);
    if (!root.isValid()) return -1;
    for (int i = 0; i < endpoints.size(); ++i)
        if (remote::apiRoot(endpoints[i].baseUrl) == root) return i;
    return -1;
}

}  // namespace remote_endpoints
