// Debug print: each element is printed once, by the thread that owns it, through the
// device printf (vprintf), as "prefix pid (x, y, z) idx (i, j): value".
#include "codegen/lowering/lowering.h"

namespace tilejit::codegen::lowering {

void Lowering::lower_print(const ir::Op& op) {
  llvm::Module& m = *module();
  auto* generic = llvm::PointerType::get(ctx, 0);
  llvm::FunctionCallee vprintf =
      m.getOrInsertFunction("vprintf", llvm::FunctionType::get(b.getInt32Ty(), {generic, generic}, false));
  std::vector<llvm::Value*> pid;
  for (int axis = 0; axis < 3; ++axis) pid.push_back(program_index(false, axis));
  const std::string& prefix = op.attr_str("prefix");
  for (const ir::Value* v : op.operands) {
    bool is_scalar = v->type.is_scalar();
    LinearLayout layout = is_scalar ? LinearLayout{} : default_layout(v->type.shape);
    std::vector<llvm::Value*> regs = is_scalar ? std::vector<llvm::Value*>{scalar(v)} : in_layout(v, layout);
    DType d = v->type.dtype;
    bool as_float = !v->type.pointer && is_float(d);
    std::string idx_fmt;
    for (int i = 0; i < layout.rank(); ++i) idx_fmt += i ? ", %d" : "%d";
    std::string value_fmt = v->type.pointer ? "%p" : as_float ? "%f" : d == DType::i64 ? "%lld" : "%d";
    std::string format = prefix + " pid (%d, %d, %d)" + (is_scalar ? "" : " idx (" + idx_fmt + ")") + ": " + value_fmt + "\n";
    llvm::Constant* text = b.CreateGlobalString(format, "tilejit_print_format", 1);
    llvm::Value* format_ptr = b.CreateAddrSpaceCast(text, generic);
    std::vector<bool> dup = is_scalar ? std::vector<bool>{false} : layout.duplicate_registers();
    llvm::Value* owner = owns_data(layout);
    for (size_t r = 0; r < regs.size(); ++r) {
      if (dup[r]) continue;
      std::vector<llvm::Value*> args = pid;
      if (!is_scalar)
        for (llvm::Value* c : coords(layout, static_cast<int>(r))) args.push_back(c);
      llvm::Value* value = regs[r];
      if (as_float) value = b.CreateFPExt(emit_cast(*this, value, d, DType::f32, false), b.getDoubleTy());
      else if (d == DType::i1 && !v->type.pointer) value = b.CreateZExt(value, b.getInt32Ty());  // true prints 1
      else if (!v->type.pointer && d != DType::i64) value = b.CreateSExtOrTrunc(value, b.getInt32Ty());
      args.push_back(value);
      std::vector<llvm::Type*> fields;
      for (auto* a : args) fields.push_back(a->getType());
      auto* record = llvm::StructType::get(ctx, fields);
      emit_if(owner, "print", [&] {
        llvm::IRBuilder<> eb(&*b.GetInsertBlock()->getParent()->getEntryBlock().getFirstInsertionPt());
        llvm::Value* buffer = eb.CreateAlloca(record);
        for (size_t i = 0; i < args.size(); ++i) b.CreateStore(args[i], b.CreateStructGEP(record, buffer, static_cast<unsigned>(i)));
        b.CreateCall(vprintf, {format_ptr, b.CreatePointerCast(buffer, generic)});
      });
    }
  }
}

}  // namespace tilejit::codegen::lowering
