// The Vulkan foundation: devices are listed and chosen by the documented preference, a device is
// created with validation on, and an embedded SPIR-V kernel runs and returns the right numbers.
#include <QTest>

#include <latch>
#include <span>
#include <thread>

#include "lantern/device.h"
#include "lantern/error.h"
#include "test_support.h"
#include "vulkan/context.h"

using namespace lantern;

class VulkanDeviceTest : public QObject {
    Q_OBJECT
private slots:
    void lists_at_least_one_compute_device() {
        auto devices = list_devices();
        QVERIFY2(!devices.empty(), "no Vulkan device: is mesa-vulkan-drivers (lavapipe) installed?");
        for (const auto& d : devices) {
            QVERIFY(!d.name.empty());
            QVERIFY(d.max_storage_buffer_range > 0);
            QVERIFY(d.subgroup_size > 0);
        }
    }

    void preference_is_discrete_then_integrated_then_virtual_then_cpu() {
        std::vector<DeviceInfo> d(4);
        d[0] = {0, "llvmpipe", DeviceType::Cpu};
        d[1] = {1, "Virt", DeviceType::VirtualGpu};
        d[2] = {2, "Intel UHD", DeviceType::IntegratedGpu};
        d[3] = {3, "Radeon RX", DeviceType::DiscreteGpu};
        QCOMPARE(choose_device(d, ""), 3u);
        d.pop_back();
        QCOMPARE(choose_device(d, ""), 2u);
        d.pop_back();
        QCOMPARE(choose_device(d, ""), 1u);
        d.pop_back();
        QCOMPARE(choose_device(d, ""), 0u);
    }

    void selector_by_index_or_name_substring() {
        std::vector<DeviceInfo> d(2);
        d[0] = {0, "llvmpipe (LLVM 15.0.6, 256 bits)", DeviceType::Cpu};
        d[1] = {1, "NVIDIA GeForce RTX 4090", DeviceType::DiscreteGpu};
        QCOMPARE(choose_device(d, "0"), 0u);
        QCOMPARE(choose_device(d, "LLVMPIPE"), 0u);
        QCOMPARE(choose_device(d, "rtx"), 1u);
        try {
            choose_device(d, "radeon");
            QFAIL("a selector that matches nothing must be an error");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::NoVulkanDevice);
            QVERIFY(std::string(e.what()).find("radeon") != std::string::npos);
        }
        QVERIFY_THROWS_EXCEPTION(Error, choose_device(d, "7"));
    }

    void embedded_kernel_runs_on_the_device() {
        auto& ctx = test::context();
        const uint32_t n = 1000;  // not a multiple of the workgroup size: tail handling matters
        std::vector<float> in(n);
        for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.5f - 7.0f;
        auto src = ctx.create_buffer(n * 4, vk::MemoryUse::DeviceLocal);
        auto dst = ctx.create_buffer((n + 64) * 4, vk::MemoryUse::DeviceLocal);
        ctx.upload(src, 0, in.data(), n * 4);
        std::vector<float> sentinel(n + 64, -12345.0f);
        ctx.upload(dst, 0, sentinel.data(), sentinel.size() * 4);
        const auto& k = ctx.kernel(shaders::ShaderId::selftest, 2, 12, {64});
        vk::BufferRange ranges[] = {{&src}, {&dst}};
        VkDescriptorSet set = ctx.make_set(k, ranges);
        struct {
            uint32_t n;
            float scale, bias;
        } push{n, 3.0f, 0.25f};
        VkCommandBuffer cmd = ctx.begin();
        ctx.dispatch(cmd, k, set, &push, (n + 63) / 64);
        ctx.barrier(cmd);
        ctx.submit_and_wait(cmd);
        std::vector<float> out(n + 64);
        ctx.download(dst, 0, out.data(), out.size() * 4);
        for (uint32_t i = 0; i < n; ++i) QCOMPARE(out[i], in[i] * 3.0f + 0.25f);
        for (uint32_t i = n; i < n + 64; ++i) QCOMPARE(out[i], -12345.0f);  // no out-of-bounds writes
        ctx.destroy(src);
        ctx.destroy(dst);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void kernels_are_made_together_and_once() {
        // Context::kernels makes a batch's missing kernels on several threads: each request gets
        // the kernel of its own spec constants, duplicates and later requests share one, and
        // every kernel runs. Workgroup sizes nothing else in the tests uses, so all are new here.
        auto& ctx = test::context();
        using vk::BindingKind;
        const std::vector<BindingKind> two = {BindingKind::Storage, BindingKind::Storage};
        const std::vector<vk::KernelSpec> batch = {{shaders::ShaderId::selftest, two, 12, {24}},
                                                   {shaders::ShaderId::selftest, two, 12, {40}},
                                                   {shaders::ShaderId::selftest, two, 12, {24}},
                                                   {shaders::ShaderId::selftest, two, 12, {56}}};
        std::vector<const vk::Kernel*> a, b;
        // Two threads asking for overlapping batches at once end up with the same kernels.
        std::thread other([&] { b = ctx.kernels(std::span(batch).subspan(1)); });
        a = ctx.kernels(batch);
        other.join();
        QCOMPARE(a.size(), batch.size());
        QCOMPARE(a[0], a[2]);
        QVERIFY(a[0] != a[1] && a[1] != a[3] && a[0] != a[3]);
        QCOMPARE(b[0], a[1]);
        QCOMPARE(b[1], a[2]);
        QCOMPARE(b[2], a[3]);
        for (size_t i = 0; i < batch.size(); ++i) QVERIFY(a[i]->spec == batch[i].spec);
        // Two threads asking for the same new kernel at the same moment both make it; one copy is
        // kept, the other destroyed, and both get the kept one. The build hook holds each thread
        // at the start of its build until the other is there too, so they do race.
        {
            std::latch both_building(2);
            ctx.set_kernel_build_hook_for_test([&] { both_building.arrive_and_wait(); });
            const std::vector<uint32_t> spec = {104};
            const vk::Kernel* theirs = nullptr;
            std::thread t([&] { theirs = &ctx.kernel(shaders::ShaderId::selftest, two, 12, spec); });
            const vk::Kernel* mine = &ctx.kernel(shaders::ShaderId::selftest, two, 12, spec);
            t.join();
            ctx.set_kernel_build_hook_for_test({});
            QCOMPARE(mine, theirs);
            QVERIFY(mine->pipeline != VK_NULL_HANDLE);
            QCOMPARE(&ctx.kernel(shaders::ShaderId::selftest, two, 12, spec), mine);
        }
        QCOMPARE(&ctx.kernel(shaders::ShaderId::selftest, two, 12, {40}), a[1]);

        const uint32_t n = 100;
        std::vector<float> in(n);
        for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) - 30.0f;
        auto src = ctx.create_buffer(n * 4, vk::MemoryUse::DeviceLocal);
        auto dst = ctx.create_buffer(n * 4, vk::MemoryUse::DeviceLocal);
        ctx.upload(src, 0, in.data(), n * 4);
        for (const vk::Kernel* k : {a[0], a[1], a[3]}) {
            const uint32_t wg = k->spec[0];
            std::vector<float> zero(n, 0.0f);
            ctx.upload(dst, 0, zero.data(), n * 4);
            vk::BufferRange ranges[] = {{&src}, {&dst}};
            VkDescriptorSet set = ctx.make_set(*k, ranges);
            struct {
                uint32_t n;
                float scale, bias;
            } push{n, -2.0f, static_cast<float>(wg)};
            VkCommandBuffer cmd = ctx.begin();
            ctx.dispatch(cmd, *k, set, &push, (n + wg - 1) / wg);
            ctx.barrier(cmd);
            ctx.submit_and_wait(cmd);
            std::vector<float> out(n);
            ctx.download(dst, 0, out.data(), n * 4);
            for (uint32_t i = 0; i < n; ++i) QCOMPARE(out[i], in[i] * -2.0f + static_cast<float>(wg));
        }
        ctx.destroy(src);
        ctx.destroy(dst);

        // One bad request fails the batch with its error; the good ones are made and kept, and
        // the bad spec can still be made properly later.
        const uint32_t too_many = ctx.limits().maxPushConstantsSize + 4;
        const std::vector<vk::KernelSpec> bad = {{shaders::ShaderId::selftest, two, 12, {72}},
                                                 {shaders::ShaderId::selftest, two, too_many, {88}}};
        try {
            ctx.kernels(bad);
            QFAIL("push constants beyond the device limit must be an error");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::Internal);
        }
        const auto good = ctx.kernels(std::span(bad).first(1));
        QVERIFY(good[0]->pipeline != VK_NULL_HANDLE);
        QVERIFY(ctx.kernel(shaders::ShaderId::selftest, two, 12, {88}).pipeline != VK_NULL_HANDLE);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void validation_messages_are_captured() {
        // Proves the messenger is live: a deliberately invalid call (a zero-sized buffer) must be
        // reported by the validation layer and land in the log the tests check.
        auto& ctx = test::context();
        VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bi.size = 0;  // invalid: VUID-VkBufferCreateInfo-size-00912
        bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
        VkBuffer b = VK_NULL_HANDLE;
        vkCreateBuffer(ctx.device(), &bi, nullptr, &b);
        if (b) vkDestroyBuffer(ctx.device(), b, nullptr);
        auto msgs = test::validation_log().take();
        QVERIFY2(!msgs.empty(), "the validation layer did not report an invalid vkCreateBuffer");
    }
};

QTEST_APPLESS_MAIN(VulkanDeviceTest)
#include "test_vulkan_device.moc"
