// UiPriority — the UI thread gives way to a CPU Vulkan driver.
//
// On a CPU driver (lavapipe) the model runs on the same cores as the UI, in dispatches whose
// threads wait for each other: a fused decode layer's workgroups meet between ops, so the UI
// thread taking a core for a few milliseconds stalls the whole step, not just one thread's share.
// Measured on a 2-core VM, 110M Q8_0 streamed in the app: 34.4 tok/s (median of 5 replies) with
// the UI thread at the default priority, 39.8 with it at nice 10 (every one of 5 alternating
// pairs faster; `lantern-cli` 44.7-45.7, the UI taking 12-13 % of a core either way). A lower
// priority changes nothing while the driver is idle: the UI still gets a free core at once.
#pragma once

// Lowers the calling thread's scheduling priority to nice kUiNice (Linux; elsewhere nothing).
// Once: an unprivileged process cannot raise it again, so it stays for the session; threads the
// caller starts afterwards inherit it. Returns the thread's nice value afterwards (0 where
// unsupported).
int yieldUiThreadToInference();

constexpr int kUiNice = 10;
