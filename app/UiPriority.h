// UiPriority — the UI thread gives way to a CPU Vulkan driver.
//
// On a CPU driver the model runs on the same cores as the UI, in dispatches whose threads wait
// for each other: a fused decode layer's workgroups meet between ops, so the UI thread taking a
// core for a few milliseconds stalls the whole step, not just one thread's share. A lower
// priority changes nothing while the driver is idle: the UI still gets a free core at once.
// Why and what it measured: docs/decisions/0036-ui-thread-niced-on-cpu-drivers.md.
#pragma once

// Lowers the calling thread's scheduling priority to nice kUiNice (Linux; elsewhere nothing).
// Once: an unprivileged process cannot raise it again, so it stays for the session; threads the
// caller starts afterwards inherit it. Returns the thread's nice value afterwards (0 where
// unsupported).
int yieldUiThreadToInference();

constexpr int kUiNice = 10;
