# Mirrors the package's Python files (SRC: python/eagerflow) into the build tree's package
# folder (DST), beside the extension the same build links, so that `make test` and `make demo`
# import the package with PYTHONPATH=<build>/python instead of compiling the library a second
# time through `pip install .`. Run on every build (cheap: it copies only what changed, and
# removes the files that are gone from SRC, so a deleted module cannot linger).
file(GLOB_RECURSE sources RELATIVE ${SRC} ${SRC}/*.py ${SRC}/py.typed)
list(FILTER sources EXCLUDE REGEX "__pycache__")
foreach(f ${sources})
  get_filename_component(dir ${DST}/${f} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  file(COPY_FILE ${SRC}/${f} ${DST}/${f} ONLY_IF_DIFFERENT)
endforeach()
file(GLOB_RECURSE staged RELATIVE ${DST} ${DST}/*.py)
list(FILTER staged EXCLUDE REGEX "__pycache__")
foreach(f ${staged})
  if(NOT EXISTS ${SRC}/${f})
    file(REMOVE ${DST}/${f})
  endif()
endforeach()
