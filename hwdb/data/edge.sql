-- Edge accelerators: NVIDIA Jetson AGX Orin (GPU + DLA), Qualcomm Hexagon NPU, Google Coral
-- Edge TPU, Hailo-8. Conventions as in nvidia.sql (dense peaks; support levels by the rule stated
-- there). For fixed-function NPUs a format is 'emulated' only where the vendor's compiler accepts
-- it and runs it on a wider native path; otherwise 'absent'. TOPS are printed by these vendors
-- for INT8 only; other formats get support rows but no peak rows unless a rate is published.

INSERT INTO source (id, title, url) VALUES
  ('nvidia-jetson-agx-orin-brief', 'NVIDIA Jetson AGX Orin Series Technical Brief', NULL),
  ('nvidia-jetson-agx-orin-datasheet', 'NVIDIA Jetson AGX Orin Series Data Sheet', NULL),
  ('qualcomm-snapdragon-8-gen-3-brief', 'Snapdragon 8 Gen 3 Mobile Platform Product Brief', NULL),
  ('qualcomm-qnn-htp', 'Qualcomm AI Engine Direct SDK (QNN) documentation: HTP backend', NULL),
  ('google-coral-usb-accelerator-datasheet', 'Coral USB Accelerator datasheet', 'https://coral.ai/docs/accelerator/datasheet/'),
  ('google-coral-edgetpu-compiler', 'Edge TPU Compiler (Coral documentation)', 'https://coral.ai/docs/edgetpu/compiler/'),
  ('hailo-8-product-brief', 'Hailo-8 AI Processor Product Brief', NULL),
  ('hailo-dataflow-compiler', 'Hailo Dataflow Compiler User Guide', NULL);

INSERT INTO architecture (name, vendor, kind, family, compute_capability, gfx_target, fp8_flavor, source) VALUES
  -- Orin's integrated GPU (GA10B), compute capability 8.7.
  ('ampere-ga10b', 'NVIDIA',   'gpu', 'Ampere',           '8.7', NULL, 'none', 'nvidia-jetson-agx-orin-brief'),
  -- Orin's two deep learning accelerators (NVDLA 2.0): INT8 and FP16 only.
  ('nvdla-v2',     'NVIDIA',   'npu', 'NVDLA 2.0',        NULL,  NULL, 'none', 'nvidia-jetson-agx-orin-brief'),
  -- Snapdragon 8 Gen 3 (SM8650) Hexagon NPU = HTP v75 in QNN's naming.
  ('hexagon-v75',  'Qualcomm', 'npu', 'Hexagon NPU (v75)', NULL, NULL, 'none', 'qualcomm-qnn-htp'),
  ('edgetpu',      'Google',   'npu', 'Edge TPU',         NULL,  NULL, 'none', 'google-coral-edgetpu-compiler'),
  ('hailo-8',      'Hailo',    'npu', 'Hailo-8',          NULL,  NULL, 'none', 'hailo-8-product-brief');

INSERT INTO support (arch, op_class, format, level, source) VALUES
  -- GA10B: Ampere third-generation Tensor Cores as on GA10x (TF32/BF16/FP16/INT8/INT4, sparsity),
  -- no FP64 Tensor Cores, no FP8; CUDA cores as on sm_86.
  ('ampere-ga10b', 'matrix', 'fp64', 'absent',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'fp32', 'absent',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'tf32', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'bf16', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'fp16', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'fp8',  'absent',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'fp4',  'absent',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'int8', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'matrix', 'int4', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'fp64', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'fp32', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'tf32', 'emulated', 'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'bf16', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'fp16', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'fp8',  'absent',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'fp4',  'absent',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'int8', 'native',   'nvidia-jetson-agx-orin-brief'),
  ('ampere-ga10b', 'vector', 'int4', 'emulated', 'nvidia-jetson-agx-orin-brief'),

  -- NVDLA 2.0: convolution core (matrix) and post-processing engines (vector) in INT8 / FP16;
  -- TensorRT accepts only INT8 and FP16 layers on DLA.
  ('nvdla-v2', 'matrix', 'fp64', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'fp32', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'tf32', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'bf16', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'fp16', 'native', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'fp8',  'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'fp4',  'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'int8', 'native', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'matrix', 'int4', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'fp64', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'fp32', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'tf32', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'bf16', 'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'fp16', 'native', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'fp8',  'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'fp4',  'absent', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'int8', 'native', 'nvidia-jetson-agx-orin-brief'),
  ('nvdla-v2', 'vector', 'int4', 'absent', 'nvidia-jetson-agx-orin-brief'),

  -- Hexagon NPU v75: HMX matrix engine INT8/INT4 (INT4 acceleration since Snapdragon 8 Gen 2) and
  -- FP16; HVX vector units with FP32/FP16 (qfloat) and INT8 arithmetic. No BF16/FP8/FP4 on v75.
  -- The product brief lists the NPU's formats; the unit split follows QNN's HTP documentation.
  ('hexagon-v75', 'matrix', 'fp64', 'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'matrix', 'fp32', 'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'matrix', 'tf32', 'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'matrix', 'bf16', 'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'matrix', 'fp16', 'native',   'qualcomm-snapdragon-8-gen-3-brief'),
  ('hexagon-v75', 'matrix', 'fp8',  'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'matrix', 'fp4',  'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'matrix', 'int8', 'native',   'qualcomm-snapdragon-8-gen-3-brief'),
  ('hexagon-v75', 'matrix', 'int4', 'native',   'qualcomm-snapdragon-8-gen-3-brief'),
  ('hexagon-v75', 'vector', 'fp64', 'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'fp32', 'native',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'tf32', 'emulated', 'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'bf16', 'emulated', 'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'fp16', 'native',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'fp8',  'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'fp4',  'absent',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'int8', 'native',   'qualcomm-qnn-htp'),
  ('hexagon-v75', 'vector', 'int4', 'emulated', 'qualcomm-qnn-htp'),

  -- Edge TPU: runs only fully 8-bit quantized TensorFlow Lite models (systolic MAC array plus
  -- 8-bit elementwise ops); everything else falls back to the host CPU.
  ('edgetpu', 'matrix', 'fp64', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'fp32', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'tf32', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'bf16', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'fp16', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'fp8',  'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'fp4',  'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'int8', 'native', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'matrix', 'int4', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'fp64', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'fp32', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'tf32', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'bf16', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'fp16', 'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'fp8',  'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'fp4',  'absent', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'int8', 'native', 'google-coral-edgetpu-compiler'),
  ('edgetpu', 'vector', 'int4', 'absent', 'google-coral-edgetpu-compiler'),

  -- Hailo-8: 8-bit dataflow compute (16-bit activations are also possible); the Dataflow Compiler
  -- accepts 4-bit weights, which are computed on the 8-bit path -> int4 'emulated'.
  ('hailo-8', 'matrix', 'fp64', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'matrix', 'fp32', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'matrix', 'tf32', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'matrix', 'bf16', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'matrix', 'fp16', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'matrix', 'fp8',  'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'matrix', 'fp4',  'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'matrix', 'int8', 'native',   'hailo-8-product-brief'),
  ('hailo-8', 'matrix', 'int4', 'emulated', 'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'fp64', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'fp32', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'tf32', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'bf16', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'fp16', 'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'fp8',  'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'fp4',  'absent',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'int8', 'native',   'hailo-dataflow-compiler'),
  ('hailo-8', 'vector', 'int4', 'absent',   'hailo-dataflow-compiler');

INSERT INTO product (name, short_name, vendor, arch, segment, memory_gib, memory_bandwidth_gbs, tdp_w, units, boost_clock_ghz, source) VALUES
  -- Jetson AGX Orin 64GB module. The module's "275 TOPS (INT8)" is sparse and is the sum of the
  -- GPU (170 sparse INT8 TOPS) and the two DLAs (105 sparse INT8 TOPS); dense that is 85 + 52.5 =
  -- 137.5 TOPS. The GPU and the DLAs are different units with different support matrices, so
  -- they are two rows here, each with its own INT8 peak; the module total is their sum.
  -- GPU: 2048 CUDA cores / 64 Tensor Cores = 16 SMs, max 1.3 GHz; 64 GB LPDDR5 (256-bit),
  -- 204.8 GB/s, shared by CPU, GPU and DLAs; module power 15-60 W (60 stored).
  ('NVIDIA Jetson AGX Orin 64GB (GPU)', 'jetson-agx-orin-64gb-gpu', 'NVIDIA', 'ampere-ga10b', 'edge', 64, 204.8, 60, 16, 1.3, 'nvidia-jetson-agx-orin-datasheet'),
  -- DLA: 2 x NVDLA 2.0 in the same module (same shared memory; power counted in the GPU row,
  -- DLA clock not taken from the datasheet -> NULL).
  ('NVIDIA Jetson AGX Orin 64GB (DLA)', 'jetson-agx-orin-64gb-dla', 'NVIDIA', 'nvdla-v2', 'edge', 64, 204.8, NULL, 2, NULL, 'nvidia-jetson-agx-orin-datasheet'),
  -- Snapdragon 8 Gen 3: Qualcomm publishes no TOPS, power, clock or bandwidth for the Hexagon
  -- NPU itself (only relative claims) -> all NULL, no peak rows; the support matrix stands.
  ('Qualcomm Snapdragon 8 Gen 3 (Hexagon NPU)', 'snapdragon-8-gen-3-npu', 'Qualcomm', 'hexagon-v75', 'edge', NULL, NULL, NULL, NULL, NULL, 'qualcomm-snapdragon-8-gen-3-brief'),
  -- Edge TPU coprocessor (USB/M.2/PCIe Coral modules): 4 TOPS INT8 at 2 TOPS per watt -> 2 W
  -- (4 / 2, derived). Parameters live in on-chip SRAM/host memory; no device memory figure.
  ('Google Coral Edge TPU', 'coral-edge-tpu', 'Google', 'edgetpu', 'edge', NULL, NULL, 2, NULL, NULL, 'google-coral-usb-accelerator-datasheet'),
  -- Hailo-8: 26 TOPS, 2.5 W typical power; weights and activations on chip, no external DRAM.
  ('Hailo-8', 'hailo-8', 'Hailo', 'hailo-8', 'edge', NULL, NULL, 2.5, NULL, NULL, 'hailo-8-product-brief');

INSERT INTO peak (product, format, dense, op_class, source) VALUES
  -- Orin GPU: 170 sparse INT8 TOPS -> 85 dense; FP32 5.3 TFLOPS (2048 x 2 x 1.3 GHz = 5.32).
  -- FP16/BF16/TF32 Tensor rates are not printed -> no rows.
  ('NVIDIA Jetson AGX Orin 64GB (GPU)', 'fp32', 5.3,  'vector', 'nvidia-jetson-agx-orin-brief'),
  ('NVIDIA Jetson AGX Orin 64GB (GPU)', 'int8', 85,   'matrix', 'nvidia-jetson-agx-orin-brief'),
  -- Orin DLAs: 105 sparse INT8 TOPS (both DLAs together) -> 52.5 dense. FP16 rate not printed.
  ('NVIDIA Jetson AGX Orin 64GB (DLA)', 'int8', 52.5, 'matrix', 'nvidia-jetson-agx-orin-brief'),
  -- Edge TPU: 4 TOPS INT8 (no sparsity).
  ('Google Coral Edge TPU', 'int8', 4, 'matrix', 'google-coral-usb-accelerator-datasheet'),
  -- Hailo-8: 26 TOPS INT8 (no sparsity).
  ('Hailo-8', 'int8', 26, 'matrix', 'hailo-8-product-brief');
