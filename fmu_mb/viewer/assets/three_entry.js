export { WebGLRenderer, Scene, PerspectiveCamera, Color, Vector2, Vector3, Quaternion, Matrix4,
  Group, Object3D, Mesh, LineSegments, Line, BufferGeometry, BufferAttribute, Float32BufferAttribute,
  SphereGeometry, BoxGeometry, CylinderGeometry, CapsuleGeometry, PlaneGeometry, ConeGeometry,
  CircleGeometry, TorusGeometry, MeshStandardMaterial, MeshLambertMaterial, MeshBasicMaterial,
  LineBasicMaterial, AmbientLight, DirectionalLight, HemisphereLight, GridHelper, AxesHelper,
  ArrowHelper, DoubleSide, Box3, Sphere, Sprite, SpriteMaterial, CanvasTexture, MathUtils, Raycaster,
  EdgesGeometry, Points, PointsMaterial, SRGBColorSpace, NoToneMapping } from 'three';
export { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
