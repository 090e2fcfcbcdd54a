// Checked mode (Options::debug_checks): a device-built descriptor field that breaks a TMA rule stops the kernel with a message.
namespace tj {

/// Prints which kernel, source line and descriptor field is wrong, then traps.
__device__ __noinline__ void descriptor_check_failed(const char* kernel, const char* where, const char* field,
                                                     long long value, const char* rule) {
  printf("tilejit: kernel %s, %s: device-built TMA descriptor field %s = %lld breaks the rule: %s\n", kernel, where,
         field, value, rule);
  __trap();
}

}  // namespace tj
